import json, datetime, uuid, enum
from typing import Optional
from pydantic import BaseModel, AnyUrl, Field
UTC = datetime.timezone.utc
class Priority(enum.Enum):
    LOW = "low"; NORMAL = "normal"; HIGH = "high"
class Address(BaseModel):
    street: str = ""
    city: str = "Berlin"
    country: str = "DE"
    verified_at: Optional[datetime.datetime] = None
class Attachment(BaseModel):
    url: AnyUrl
    size: int = 0
    uploaded_at: datetime.datetime = datetime.datetime(2026, 1, 1, tzinfo=UTC)
class Order(BaseModel):
    order_id: uuid.UUID
    customer: str
    created_at: datetime.datetime
    updated_at: Optional[datetime.datetime] = None
    due_date: datetime.date
    ship_by: Optional[datetime.date] = None
    window: datetime.timedelta = datetime.timedelta(hours=2)
    callback_url: AnyUrl
    homepage: Optional[AnyUrl] = None
    webhook: AnyUrl = AnyUrl("https://hooks.example.com/orders")
    amount: float
    tax_rate: float = 0.19
    quantity: int = 1
    priority: Priority = Priority.NORMAL
    express: bool = False
    notes: str = ""
    tags: list[str] = []
    line_numbers: set[int] = set()
    billing: Address = Address()
    shipping: Address = Address()
    attachments: list[Attachment] = []
    reference: Optional[str] = None
    currency: str = "EUR"
    channel: str = "web"
    retries: int = 3
    timeout: datetime.timedelta = datetime.timedelta(seconds=30)
    source_ip: Optional[str] = None
    locale: str = "de-DE"
    confirmed_at: Optional[datetime.datetime] = None
    version: int = 1

if __name__ == "__main__":
    print(json.dumps(Order.model_json_schema(), indent=1, sort_keys=True))
